package spnego

// SignForTest is a's cookie for user, as a negotiation would set it.
func SignForTest(a *Auth, user, principal string) string { return a.sign(user, principal) }
