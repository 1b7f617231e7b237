package envtest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// DocTable returns the cells of the rows of the markdown table under heading in the file at
// path: the rows whose first cell starts with a backquoted item ("| `x` | ..."), split on "|"
// (so cells[1] is the first cell). Tests check docs against the code with it.
func DocTable(path, heading string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var rows [][]string
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == heading
			continue
		}
		if in && strings.HasPrefix(line, "| `") {
			rows = append(rows, strings.Split(line, "|"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no table under %q", path, heading)
	}
	return rows, nil
}
