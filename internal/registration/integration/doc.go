// Package integration holds the registration tests that run the management controllers and
// agents against two real API servers (management and downstream).
package integration
