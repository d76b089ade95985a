// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/record"

	pluginv1alpha1 "github.com/kubevirt-plugins/framework/api/plugin/v1alpha1"
)

// TestLongServerMessageGivesAValidUTF8EventAndABoundedError: a node hook
// server failing with a 1 MiB message of three-byte characters gives
// Events whose messages are valid UTF-8 and at most maxEventMessage bytes,
// cut at a character with a marker, and a dispatch error whose text is
// bounded too (the server's message cut to maxServerMessage bytes, the
// code kept). The three Ignore plugins pad the message with 0, 1 and 2
// ASCII bytes, so that a cut at a fixed byte count falls inside a
// character for at least two of them.
func TestLongServerMessageGivesAValidUTF8EventAndABoundedError(t *testing.T) {
	root := socketRoot(t)
	var plugins []*pluginv1alpha1.Plugin
	for i, name := range []string{"a-pad-0", "a-pad-1", "a-pad-2", "b-fail"} {
		msg := strings.Repeat("x", i%3) + strings.Repeat("€", 1<<20/3)
		sock := serve(t, root, &hookServer{name: name, journal: &journal{}, fail: codes.Internal, failMessage: msg})
		hook := nodeHook(sock, pluginv1alpha1.PreVMStart)
		if name != "b-fail" {
			hook.FailureStrategy = pluginv1alpha1.Ignore
		}
		plugins = append(plugins, plugin(name, "", hook))
	}
	rec := record.NewFakeRecorder(10)
	d, err := New(Options{Plugins: &staticPlugins{snap: storeSnapshot(plugins...)}, SocketRoots: []string{root}, EventRecorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })

	err = d.Dispatch(t.Context(), pluginv1alpha1.PreVMStart, vmi("vm-1", nil), NodeContext{})
	if err == nil {
		t.Fatal("dispatch with a failing hook under Fail succeeded")
	}
	text := err.Error()
	// The site (plugin, hook, socket, hook point) and gRPC's "rpc error:
	// code = ... desc = " come on top of the server's message.
	if bound := maxServerMessage + 1024; len(text) > bound {
		t.Errorf("the dispatch error is %d bytes long, want at most %d", len(text), bound)
	}
	if !utf8.ValidString(text) || !strings.Contains(text, `plugin "b-fail" node hook #0`) || !strings.Contains(text, fmt.Sprintf("(%d bytes in all)", 1<<20/3*3)) {
		t.Errorf("dispatch error (%d bytes, valid UTF-8 %v) %.200q..., want the plugin named and the cut marked", len(text), utf8.ValidString(text), text)
	}
	if code := status.Code(err); code != codes.Internal {
		t.Errorf("the dispatch error's code is %s, want the server's Internal", code)
	}

	events := drain(rec)
	if len(events) != len(plugins) {
		t.Fatalf("%d Events, want one per plugin", len(events))
	}
	for _, e := range events {
		// The fake recorder writes "<type> <reason> <message>".
		_, msg, _ := strings.Cut(strings.SplitN(e, " ", 2)[1], " ")
		if !utf8.ValidString(msg) {
			t.Errorf("Event message of %d bytes is not valid UTF-8; it ends with %q", len(msg), msg[max(0, len(msg)-8):])
		}
		if len(msg) > maxEventMessage || !strings.HasSuffix(msg, "...") {
			t.Errorf("Event message of %d bytes ending %q, want at most %d ending with the marker ...", len(msg), msg[max(0, len(msg)-8):], maxEventMessage)
		}
	}
}

// TestCutTextKeepsRunesWhole: cutText cuts at a rune boundary within the
// bound, marker included, and makes invalid UTF-8 valid.
func TestCutTextKeepsRunesWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"€€€€", 12, "€€€€"},
		{"€€€€", 11, "€€..."},
		{"x€€€€", 11, "x€€..."},
		{"xx€€€€", 11, "xx€€..."},
		{"ok\xffok", 10, "ok\uFFFDok"},
		{"\xff\xff\xff\xff", 10, "\uFFFD\uFFFD..."},
	} {
		got := cutText(tc.in, tc.max, "...")
		if got != tc.want || len(got) > tc.max || !utf8.ValidString(got) {
			t.Errorf("cutText(%q, %d) = %q (%d bytes), want %q", tc.in, tc.max, got, len(got), tc.want)
		}
	}
}

// TestHookErrorQuotesASocketWithAControlCharacter: a node hook socket
// holding a NUL (admission refuses it; a Plugin stored earlier may hold
// one) is quoted in the error's text, which carries no control character;
// other sockets are named as they are.
func TestHookErrorQuotesASocketWithAControlCharacter(t *testing.T) {
	err := &HookError{Plugin: "p", HookPoint: pluginv1alpha1.PreVMStart, Socket: "/var/run/kubevirt/nul/hook.sock\x00.sock", Err: fmt.Errorf("refused")}
	if text := err.Error(); strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) || !strings.Contains(text, `(socket "/var/run/kubevirt/nul/hook.sock\x00.sock")`) {
		t.Errorf("HookError %q, want the socket quoted", text)
	}
	err.Socket = "/var/run/kubevirt/p/hook.sock"
	if text := err.Error(); !strings.Contains(text, "(socket /var/run/kubevirt/p/hook.sock)") {
		t.Errorf("HookError %q, want the socket as it is", text)
	}
}
