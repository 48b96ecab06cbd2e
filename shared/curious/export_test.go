package curious

// The internal test helpers, for network_test.go: it runs a real server,
// and the server imports this package, so that test lives in the external
// package curious_test.
var (
	MNISTOptions = mnistOptions
	PrepareMNIST = prepareMNIST
	ErrorsAt     = errorsAt
)
