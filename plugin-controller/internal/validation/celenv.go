package validation

import (
	"errors"

	"github.com/kubevirt-plugins/framework/api/celenv"
)

// CELEnv checks expressions with the shared CEL environment, the one the
// launcher and the handler compile with.
type CELEnv struct {
	Env *celenv.Env
}

var _ Checker = CELEnv{}

// CheckCondition implements Checker.
func (c CELEnv) CheckCondition(expression string) error {
	_, err := c.Env.Condition(expression)
	return shorten(err)
}

// CheckDomainTransform implements Checker.
func (c CELEnv) CheckDomainTransform(expression string) error {
	_, err := c.Env.DomainTransform(expression)
	return shorten(err)
}

// compileError drops the expression text from the message: the field path
// already says which expression it is, and expressions can be long.
type compileError struct{ err *celenv.CompileError }

func (e compileError) Error() string { return e.err.Reason + " error: " + e.err.Message }
func (e compileError) Unwrap() error { return e.err }

func shorten(err error) error {
	var ce *celenv.CompileError
	if errors.As(err, &ce) {
		return compileError{err: ce}
	}
	return err
}
