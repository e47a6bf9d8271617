package repository

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The repository reads directories and files through one rule, at
// start-up and in Load alike: symbolic links are followed (a model or
// version directory may be a link to a directory, as volume mounts and
// atomic deployments make them), and files are read only when they are
// regular files. A named pipe, a device or a socket is refused before it
// is opened, so nothing in the repository can hold up a load.

// isDir reports whether the entry of dir is a directory, or a symbolic
// link to one.
func isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// readRegular reads the file at path, which must be a regular file (or a
// symbolic link to one). Its errors wrap the os errors (fs.ErrNotExist).
func readRegular(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file but %s: the repository reads regular files only", path, fileKind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil {
		return nil, err
	} else if !os.SameFile(st, now) {
		return nil, fmt.Errorf("%s changed while it was being opened", path)
	}
	return io.ReadAll(f)
}

// fileKind names what a file that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	}
	return "of mode " + m.String()
}
