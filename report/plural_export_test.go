package report

// OnePlural is onePlural, for the tests of package report_test.
var OnePlural = onePlural
