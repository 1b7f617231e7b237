package eks

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var namePattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]*$`)

func checkName(kind, name string, maxLen int) error {
	switch {
	case name == "":
		return invalidParam("%s is required", kind)
	case len(name) > maxLen || !namePattern.MatchString(name):
		return invalidParam("%s %q must be 1 to %d characters, start with a letter or digit and contain only letters, digits, hyphens and underscores", kind, name, maxLen)
	}
	return nil
}

func checkRoleARN(field, arn string) error {
	if arn == "" {
		return invalidParam("%s is required", field)
	}
	if !strings.HasPrefix(arn, "arn:aws:iam::") || !strings.Contains(arn, ":role/") {
		return invalidParam("%s %q is not a valid IAM role ARN", field, arn)
	}
	return nil
}

func checkIDs(field, prefix string, ids []string) error {
	for _, id := range ids {
		if !strings.HasPrefix(id, prefix) || len(id) == len(prefix) {
			return invalidParam("The %s ID '%s' does not exist", field, id)
		}
	}
	return nil
}

// checkTags applies the AWS tagging limits; mk builds the operation's own error type.
func checkTags(tags map[string]string, mk func(string, ...any) *apiError) error {
	if len(tags) > 50 {
		return mk("a resource can have at most 50 tags, got %d", len(tags))
	}
	for k, v := range tags {
		switch {
		case k == "" || len(k) > 128:
			return mk("tag key %q must be 1 to 128 characters", k)
		case len(v) > 256:
			return mk("value of tag %q must be at most 256 characters", k)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			return mk("tag key %q uses the reserved prefix aws:", k)
		}
	}
	return nil
}

// checkPublicCIDRs enforces what EKS accepts for public endpoint access: valid IPv4 CIDRs
// that are not private, reserved or loopback blocks.
func checkPublicCIDRs(cidrs []string) error {
	if len(cidrs) == 0 {
		return invalidParam("publicAccessCidrs must contain at least one CIDR block")
	}
	if len(cidrs) > 40 {
		return invalidParam("publicAccessCidrs can contain at most 40 CIDR blocks, got %d", len(cidrs))
	}
	var bad []string
	for _, c := range cidrs {
		ip, _, err := net.ParseCIDR(c)
		if err != nil || ip.To4() == nil || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() {
			bad = append(bad, c)
		}
	}
	if len(bad) > 0 {
		return invalidParam("The following CIDRs are invalid in publicAccessCidrs: %s", strings.Join(bad, ", "))
	}
	return nil
}

// logMask folds a logging request into the current mask of enabled log types.
func logMask(cur uint8, l *loggingJSON) (uint8, error) {
	if l == nil {
		return cur, nil
	}
	for _, setup := range l.ClusterLogging {
		on := setup.Enabled != nil && *setup.Enabled
		for _, t := range setup.Types {
			i := slices.Index(logTypes, t)
			if i < 0 {
				return 0, invalidParam("unknown log type %q (valid: %s)", t, strings.Join(logTypes, ", "))
			}
			if on {
				cur |= 1 << i
			} else {
				cur &^= 1 << i
			}
		}
	}
	return cur, nil
}

var amiTypes = []string{
	"AL2_x86_64", "AL2_x86_64_GPU", "AL2_ARM_64", "CUSTOM",
	"BOTTLEROCKET_ARM_64", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64_FIPS", "BOTTLEROCKET_x86_64_FIPS",
	"BOTTLEROCKET_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "BOTTLEROCKET_x86_64_NVIDIA_FIPS",
	"WINDOWS_CORE_2019_x86_64", "WINDOWS_FULL_2019_x86_64", "WINDOWS_CORE_2022_x86_64", "WINDOWS_FULL_2022_x86_64",
	"WINDOWS_CORE_2025_x86_64", "WINDOWS_FULL_2025_x86_64",
	"AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "AL2023_x86_64_NEURON", "AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA",
}

var capacityTypes = []string{"ON_DEMAND", "SPOT", "CAPACITY_BLOCK"}

var taintEffects = []string{"NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"}

func checkTaints(ts []Taint) error {
	for _, t := range ts {
		if t.Key == "" || !slices.Contains(taintEffects, t.Effect) {
			return invalidParam("taint %+v needs a key and an effect of %s", t, strings.Join(taintEffects, ", "))
		}
	}
	return nil
}

// checkScaling applies EKS's node group size rules to the effective sizes.
func checkScaling(minSize, maxSize, desired int32) error {
	switch {
	case minSize < 0:
		return invalidParam("Minimum capacity %d can't be negative", minSize)
	case maxSize < 1:
		return invalidParam("Maximum capacity %d must be at least 1", maxSize)
	case minSize > maxSize:
		return invalidParam("Minimum capacity %d can't be greater than max size %d", minSize, maxSize)
	case desired < minSize:
		return invalidParam("Minimum capacity %d can't be greater than desired size %d", minSize, desired)
	case desired > maxSize:
		return invalidParam("Desired capacity %d can't be greater than max size %d", desired, maxSize)
	}
	return nil
}

// Pagination: EKS list calls take maxResults (1-100, default 100) and an opaque nextToken.
// The simulator's token is the last item returned, so pages stay stable while items are
// added or removed.

func pageParams(q url.Values) (int, string, error) {
	limit := 100
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return 0, "", invalidParam("maxResults must be between 1 and 100, got %q", v)
		}
		limit = n
	}
	return limit, q.Get("nextToken"), nil
}

// page returns the page of items after token. Sorted items are searched by value; others
// (updates, in creation order) by position of the token's item.
func page(items []string, limit int, token string, sorted bool) ([]string, *string, error) {
	start := 0
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, nil, invalidParam("The nextToken provided is invalid")
		}
		last := string(b)
		if sorted {
			start, _ = slices.BinarySearch(items, last)
			if start < len(items) && items[start] == last {
				start++
			}
		} else {
			i := slices.Index(items, last)
			if i < 0 {
				return nil, nil, invalidParam("The nextToken provided is invalid")
			}
			start = i + 1
		}
	}
	end := min(start+limit, len(items))
	out := items[start:end]
	if end < len(items) && len(out) > 0 {
		next := base64.RawURLEncoding.EncodeToString([]byte(out[len(out)-1]))
		return out, &next, nil
	}
	return out, nil, nil
}

// newUUID returns a random version 4 UUID, the form of EKS update and node group IDs.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// randomHex returns n random lowercase hex digits.
func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// stableHex derives n hex digits from s, so the same subnets always land in the same VPC.
func stableHex(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}
