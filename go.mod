module github.com/hyfed/hyfed

go 1.26
