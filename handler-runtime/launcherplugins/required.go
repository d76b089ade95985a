package launcherplugins

import (
	"context"
	"fmt"
	"sync"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubevirt-plugins/framework/api/celenv"
)

// lazyEnv is the CEL environment for the conditions of required Plugins,
// built the first time one is evaluated: VMIs that require nothing cost
// nothing.
type lazyEnv struct {
	once sync.Once
	env  *celenv.Env
	err  error
}

func (l *lazyEnv) eval(ctx context.Context, expr string, vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
	l.once.Do(func() {
		if l.env == nil {
			if l.env, l.err = celenv.New(celenv.Options{}); l.err != nil {
				l.err = fmt.Errorf("building the CEL environment: %w", l.err)
			}
		}
	})
	if l.err != nil {
		return false, l.err
	}
	c, err := l.env.Condition(expr)
	if err != nil {
		return false, err
	}
	return c.Eval(ctx, vmi)
}
