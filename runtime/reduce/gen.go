package reduce

// The amd64 kernels are written by the avo program in _gen, a module of its
// own so that this module does not depend on avo.
//go:generate sh -c "cd _gen && go run . -out ../kernels_amd64.s -stubs ../kernels_amd64.go -pkg reduce"
