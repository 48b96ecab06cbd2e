package session

import (
	"errors"
	"testing"

	"github.com/hyfed/hyfed/shared/protocol"
)

// A participant runs the key mode its link says: a "threshold:" link
// refuses a setup with the shared key (the server would have it seal under
// the key every holder of the link derives), a link without it stops at a
// key setup; both are fatal, and the matching cases go on.
func TestKeyModeFits(t *testing.T) {
	thr, shared := Link{Scheme: SchemeThreshold}, Link{Scheme: "bgv"}
	setup := func(keys string) *protocol.Message {
		return &protocol.Message{Kind: protocol.KindSetup, Setup: &protocol.Setup{Config: protocol.Config{Keys: keys}}}
	}
	keySetup := &protocol.Message{Kind: protocol.KindKeySetup, KeySetup: &protocol.KeySetup{}}
	for _, tc := range []struct {
		name string
		l    Link
		m    *protocol.Message
		bad  bool
	}{
		{"threshold link, shared setup", thr, setup(protocol.KeysShared), true},
		{"threshold link, setup without keys", thr, setup(""), true},
		{"threshold link, threshold setup", thr, setup(protocol.KeysThreshold), false},
		{"threshold link, key setup", thr, keySetup, false},
		{"shared link, key setup", shared, keySetup, true},
		{"shared link, shared setup", shared, setup(protocol.KeysShared), false},
	} {
		err := keyModeFits(tc.l, tc.m)
		if tc.bad != (err != nil) || (err != nil && (!errors.Is(err, ErrKeyMode) || !errors.Is(err, ErrFatal))) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
