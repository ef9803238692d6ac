// Package jsonpatch applies JSON patches (RFC 6902, [Apply]) and JSON merge
// patches (RFC 7386, [MergePatch]) to JSON documents exactly as
// gopkg.in/evanphx/json-patch.v4 — the library kube-apiserver patches
// with — does, byte for byte, with two differences that make it safe to
// serve to anyone:
//
//   - Bounds. Apply takes a limit on the bytes that copy operations add,
//     per call, where v4 has only a process-wide variable
//     (AccumulatedCopySizeLimit, which kube-apiserver sets to 3 MiB at
//     start-up): without it a patch of a few kilobytes that copies an
//     array into itself twenty times exhausts memory.
//   - Linear work. v4 parses a document lazily, one level at a time, each
//     level scanning again the text of everything nested in it: a patch
//     nested thousands of levels deep costs seconds. Here the first parse
//     of a text indexes all its containers, and each level skips what is
//     nested in it in one step.
//
// Where v4 panics on some inputs (listed at Apply), this package returns an
// error or a defined result instead.
//
// The package depends on the standard library and jsontree only; its tests
// compare it with v4.
package jsonpatch
