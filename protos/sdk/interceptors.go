// SPDX-License-Identifier: Apache-2.0

package sdk

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubevirt-plugins/framework/protos/collectors"
)

// interceptorChain composes, outermost first, metrics (when a registerer is
// set), call logging and panic recovery, so that a panic is counted and
// logged as the Internal error it becomes.
func interceptorChain(name string, o options) (grpc.ServerOption, *serverMetrics, error) {
	var chain []grpc.UnaryServerInterceptor
	var metrics *serverMetrics
	if o.registerer != nil {
		metrics = newServerMetrics()
		// An identical collector already registered is reused, any other
		// failure returned (the project's policy, README.md "Metrics").
		var err error
		if metrics, err = collectors.Register(o.registerer, metrics); err != nil {
			return nil, nil, fmt.Errorf("%s: register gRPC server metrics: %w", name, err)
		}
		chain = append(chain, metrics.unaryServerInterceptor())
	}
	chain = append(chain,
		logging.UnaryServerInterceptor(logrAdapter(o.logger), logging.WithLogOnEvents(logging.FinishCall)),
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(panicToError(name, o.logger))),
	)
	return grpc.ChainUnaryInterceptor(chain...), metrics, nil
}

func panicToError(name string, log logr.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		method, _ := grpc.Method(ctx)
		log.Error(fmt.Errorf("panic: %v", p), "hook handler panicked", "server", name, "method", method, "stack", string(debug.Stack()))
		return status.Errorf(codes.Internal, "%s: %s: handler panicked: %v", name, method, p)
	}
}

// logrAdapter routes go-grpc-middleware's call logs to a logr.Logger:
// debug at V(1), info and warnings at V(0), errors as errors.
func logrAdapter(l logr.Logger) logging.Logger {
	return logging.LoggerFunc(func(_ context.Context, lvl logging.Level, msg string, fields ...any) {
		switch lvl {
		case logging.LevelDebug:
			l.V(1).Info(msg, fields...)
		case logging.LevelError:
			l.Error(nil, msg, fields...)
		default:
			l.Info(msg, fields...)
		}
	})
}
