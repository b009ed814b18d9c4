package workload

import "errors"

// BusinessError is an outcome the workload's rules expect (insufficient
// credit, no such holding): the transaction is rolled back and counted as a
// business exception, not as an error. Declare them once as package values.
type BusinessError struct {
	Reason string
}

func (e *BusinessError) Error() string { return e.Reason }

// Business declares a business exception.
func Business(reason string) *BusinessError { return &BusinessError{Reason: reason} }

// IsBusiness reports whether err is, or wraps, a business exception.
func IsBusiness(err error) bool {
	var be *BusinessError
	return errors.As(err, &be)
}
