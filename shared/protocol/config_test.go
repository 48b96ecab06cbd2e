package protocol

import (
	"strings"
	"testing"
)

// TestConfigKeys: the key mode defaults to shared, threshold fills the
// committee and t, and every bad value is refused naming its field.
func TestConfigKeys(t *testing.T) {
	base := Defaults()
	base.Clients = 4
	c := base
	c.Keys, c.KeyCommittee, c.KeyThreshold = "", 0, 0
	if err := c.Validate(); err != nil || c.Keys != KeysShared || c.KeyCommittee != DefaultKeyCommittee || c.KeyThreshold != DefaultKeyThreshold {
		t.Fatalf("empty key settings: %v, %+v", err, c)
	}
	c = base
	c.Keys = KeysThreshold
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		keys     string
		n, thr   int
		contains string
	}{
		{"secret", 3, 2, "keys \"secret\""},
		{KeysThreshold, -1, 1, "key committee -1"},
		{KeysThreshold, 2000, 2, "key committee 2000"},
		{KeysThreshold, 3, 4, "key threshold 4"},
		{KeysThreshold, 3, -2, "key threshold -2"},
		{KeysThreshold, 3, 1, "key threshold 1"},
	} {
		c := base
		c.Keys, c.KeyCommittee, c.KeyThreshold = bad.keys, bad.n, bad.thr
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), bad.contains) {
			t.Errorf("%+v: error %v, want one naming %q", bad, err, bad.contains)
		}
	}
}
