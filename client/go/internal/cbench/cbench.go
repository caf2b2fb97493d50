// Package cbench times rk_client_lookup_index in a C loop, for the binding's benchmark to set the
// C call beside the Go call in the same run (bench_test.go). Not part of the binding's API.
package cbench

/*
#cgo pkg-config: ringkeeper
#include "ringkeeper.h"
static volatile int64_t sink;
static void loop(void *c, uint64_t serial, const char *keys, size_t n, size_t len, size_t count)
{
    for (size_t i = 0; i < count; i++)
        sink += rk_client_lookup_index(c, serial, keys + i % n * len, len);
}
*/
import "C"

import "unsafe"

// Lookups makes count lookups on the rk_client c, with the snapshot serial given, of the keys of
// keyLen bytes packed in keys, in turn, all in one C loop.
func Lookups(c unsafe.Pointer, serial uint64, keys []byte, keyLen, count int) {
	C.loop(c, C.uint64_t(serial), (*C.char)(unsafe.Pointer(&keys[0])), C.size_t(len(keys)/keyLen),
		C.size_t(keyLen), C.size_t(count))
}
