package server

// OutOfRangeForTest exposes the OUT_OF_RANGE status builder to tests.
var OutOfRangeForTest = outOfRange
