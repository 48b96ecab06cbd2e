package secret

import "testing"

func TestSecretDerivations(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(s.String())
	if err != nil || back != s {
		t.Fatalf("round trip: %v", err)
	}
	other := FromSeed(1)
	if s.Pseudonym("rec-1") == other.Pseudonym("rec-1") || s.Fingerprint() == other.Fingerprint() {
		t.Fatal("two secrets derive the same values")
	}
	if s.Pseudonym("rec-1") == s.Pseudonym("rec-2") || s.PickSeed("g", 1) == s.PickSeed("g", 2) {
		t.Fatal("derivations ignore their input")
	}
	if s.Pseudonym("rec-1") != back.Pseudonym("rec-1") {
		t.Fatal("pseudonyms not deterministic")
	}
	for _, bad := range []string{"", "!!", "AAAA"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
