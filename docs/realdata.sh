#!/bin/bash
# Real data sets the defaults were never tuned on, from Debian's R packages
# (kernlab, mlbench, modeldata), written as LIBSVM files into DIR (default
# .cache/realdata): binary labels, factors one-hot, rows with missing values
# dropped, then every feature but dna's (already 0/1) divided by its largest
# magnitude, as LIBSVM's site scales its sets. `make realdata` runs this and
# the suite on them into docs/realdata.md; docs/results/2026-11-24-real-data.md
# has the first such run.
set -euo pipefail
dir=${1:-.cache/realdata}
mkdir -p "$dir"
if ! command -v Rscript >/dev/null || ! Rscript -e 'library(kernlab); library(mlbench); library(modeldata)' >/dev/null 2>&1; then
	${SUDO:-} apt-get update -qq
	DEBIAN_FRONTEND=noninteractive ${SUDO:-} apt-get install -y -qq --no-install-recommends r-base-core r-cran-kernlab r-cran-mlbench r-cran-modeldata
fi
Rscript - "$dir" <<'R'
suppressMessages({library(kernlab); library(mlbench); library(modeldata)})
dir <- commandArgs(trailingOnly = TRUE)[1]
write_svm <- function(name, X, y) {
  ok <- complete.cases(X) & !is.na(y)
  X <- X[ok, , drop = FALSE]; y <- y[ok]
  lab <- ifelse(y, "+1", "-1")
  con <- file(file.path(dir, paste0(name, ".raw.libsvm")), "w")
  for (i in seq_len(nrow(X))) {
    v <- X[i, ]; nz <- which(v != 0)
    writeLines(paste(c(lab[i], paste0(nz, ":", format(v[nz], digits = 8, trim = TRUE))), collapse = " "), con)
  }
  close(con)
  cat(sprintf("%s: %d x %d, positives %.1f%%, max|x| %.3g, max squared row norm %.3g\n",
    name, nrow(X), ncol(X), 100 * mean(y), max(abs(X)), max(rowSums(X^2))))
}
mm <- function(df) { m <- model.matrix(~ . - 1, data = df); storage.mode(m) <- "double"; m }
data(spam); write_svm("spam", as.matrix(spam[, -58]), spam$type == "spam")
data(ticdata); write_svm("ticdata", mm(data.frame(lapply(ticdata[, -86], as.numeric))), ticdata$CARAVAN == "insurance")
data(LetterRecognition); write_svm("letter", as.matrix(LetterRecognition[, -1]), LetterRecognition$lettr %in% LETTERS[1:13])
data(Satellite); write_svm("satellite", as.matrix(Satellite[, -37]), Satellite$classes %in% c("red soil", "grey soil", "damp grey soil"))
data(Shuttle); write_svm("shuttle", as.matrix(Shuttle[, -10]), Shuttle$Class == "Rad.Flow")
data(DNA); write_svm("dna", mm(data.frame(lapply(DNA[, -181], function(f) as.numeric(as.character(f))))), DNA$Class == "n")
data(mlc_churn); write_svm("churn", mm(mlc_churn[, -20]), mlc_churn$churn == "yes")
data(lending_club); write_svm("lending", mm(lending_club[, -23]), lending_club$Class == "bad")
data(cells); write_svm("cells", as.matrix(cells[, -(1:2)]), cells$class == "PS")
R
mv "$dir/dna.raw.libsvm" "$dir/dna.libsvm"
for f in spam ticdata letter satellite shuttle churn lending cells; do
	# max-abs per feature (awk prints %.6g)
	awk 'NR==FNR{for(i=2;i<=NF;i++){split($i,a,":"); v=a[2]<0?-a[2]:a[2]; if(v>m[a[1]])m[a[1]]=v}; next}
	     {s=$1; for(i=2;i<=NF;i++){split($i,a,":"); s=s" "a[1]":"a[2]/m[a[1]]}; print s}' \
		"$dir/$f.raw.libsvm" "$dir/$f.raw.libsvm" > "$dir/$f.libsvm"
done
