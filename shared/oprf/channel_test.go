package oprf

import (
	"crypto/rand"
	"strings"
	"testing"
)

// TestChannel: a share reaches its recipient, and only unaltered, in its
// own context and from its own dealer's key.
func TestChannel(t *testing.T) {
	c := Committee{N: 3, T: 2}
	d, err := Deal(c, 1, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dealer, to, other := mustChannelKey(t), mustChannelKey(t), mustChannelKey(t)
	share := d.Shares[1] // to member 2
	sealed, err := dealer.SealShare(to.Public(), "fed", share)
	if err != nil {
		t.Fatal(err)
	}
	got, err := to.OpenShare(dealer.Public(), "fed", c, 2, sealed)
	if err != nil || got.Dealer != 1 || got.Recipient != 2 || !got.Value.IsEqual(share.Value) {
		t.Fatalf("opened %+v, %v", got, err)
	}
	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 1
	readdressed := append([]byte(nil), sealed...)
	readdressed[3] = 3
	for _, tc := range []struct {
		name    string
		key     *ChannelKey
		from    []byte
		context string
		member  int
		data    []byte
		want    string
	}{
		{"another member", other, dealer.Public(), "fed", 2, sealed, "authentication failed"},
		{"another dealer's key", to, other.Public(), "fed", 2, sealed, "authentication failed"},
		{"another federation", to, dealer.Public(), "fed2", 2, sealed, "authentication failed"},
		{"not for this member", to, dealer.Public(), "fed", 3, sealed, "not 3"},
		{"altered", to, dealer.Public(), "fed", 2, flipped, "authentication failed"},
		{"readdressed", to, dealer.Public(), "fed", 3, readdressed, "authentication failed"},
		{"short", to, dealer.Public(), "fed", 2, sealed[:20], "too short"},
		{"a bad peer key", to, []byte{1, 2, 3}, "fed", 2, sealed, "peer key"},
	} {
		if _, err := tc.key.OpenShare(tc.from, tc.context, c, tc.member, tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func mustChannelKey(t *testing.T) *ChannelKey {
	t.Helper()
	k, err := NewChannelKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
