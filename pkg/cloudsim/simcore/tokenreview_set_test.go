package simcore

import "testing"

// fakeReviewer recognizes tokens starting with kind; it accepts only the one it issued.
type fakeReviewer struct{ kind, issued string }

func (f fakeReviewer) ReviewToken(_, token string) (ReviewedUser, bool, string) {
	switch {
	case len(token) < len(f.kind) || token[:len(f.kind)] != f.kind:
		return ReviewedUser{}, false, ""
	case token == f.issued:
		return ReviewedUser{Username: "user-of-" + token}, true, ""
	}
	return ReviewedUser{}, true, "not issued by " + f.issued
}

// TestReviewersAcceptWhenAnyAccepts: two simulators of one provider on one backend (as parallel
// tests run them): a token the second issued is accepted although the first refuses it.
func TestReviewersAcceptWhenAnyAccepts(t *testing.T) {
	s := &Reviewers{}
	s.Add(fakeReviewer{kind: "eks-", issued: "eks-a"})
	removeB := s.Add(fakeReviewer{kind: "eks-", issued: "eks-b"})
	for _, tc := range []struct {
		token, user, reason string
		recognized          bool
	}{
		{token: "eks-a", user: "user-of-eks-a", recognized: true},
		{token: "eks-b", user: "user-of-eks-b", recognized: true},
		{token: "eks-forged", reason: "not issued by eks-a", recognized: true},
		{token: "gke-x"},
	} {
		t.Run(tc.token, func(t *testing.T) {
			u, ok, why := s.ReviewToken("backend", tc.token)
			if u.Username != tc.user || ok != tc.recognized || why != tc.reason {
				t.Errorf("ReviewToken(%s) = %q, %v, %q; want %q, %v, %q", tc.token, u.Username, ok, why, tc.user, tc.recognized, tc.reason)
			}
		})
	}
	removeB()
	if u, ok, why := s.ReviewToken("backend", "eks-b"); u.Username != "" || !ok || why == "" {
		t.Errorf("after removing its issuer, eks-b = %q, %v, %q; want refused", u.Username, ok, why)
	}
}
