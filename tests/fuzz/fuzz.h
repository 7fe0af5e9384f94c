/*
 * What every mmureplay fuzz target shares: the libFuzzer entry points,
 * and an input as a file the code under test can open by name.
 *
 * The targets build two ways: with clang's libFuzzer (scripts/fuzz.sh,
 * -fsanitize=fuzzer: coverage-guided, for minutes), and with driver.c's
 * main() under gcc, where they run the committed corpus and every input
 * that once crashed (tests/fuzz/regress/) as a regression test.
 */
#ifndef MMUREPLAY_TESTS_FUZZ_H
#define MMUREPLAY_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * The input as an anonymous file: *path is "/proc/self/fd/N" (valid
 * until fuzz_file_close).  The fd, or -1.
 */
int fuzz_file_open(const uint8_t *data, size_t size, char *path,
		   size_t len);
void fuzz_file_close(int fd);

#endif
