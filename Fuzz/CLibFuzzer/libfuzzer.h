#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver, from its fuzzer_no_main runtime (LLVM's compiler-rt). carwindow-fuzz calls
// it from its own main, because SwiftPM turns an executable's main into a module-named symbol
// and libFuzzer's own main could not be used.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
