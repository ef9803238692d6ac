package apiserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeFileAtomic writes data to a temporary file next to path and renames
// it. Its errors name path, never the temporary file, and say what to do.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fileError(path, dir, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync() // on disk before the rename makes it the file
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fileError(path, dir, err)
	}
	return nil
}

// fileError is the error of writing path (in dir): the cause without the
// temporary file's name, and what to do about it.
func fileError(path, dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	} else if le := (*os.LinkError)(nil); errors.As(err, &le) {
		err = le.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: the directory %s does not exist (create it, or give another path)", path, dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: no permission to write in %s (give a path you can write)", path, dir)
	}
	return fmt.Errorf("%s: %w", path, err)
}
