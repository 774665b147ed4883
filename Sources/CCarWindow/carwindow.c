// The C API is implemented in Swift (Sources/CarWindowCAPI, exported with @_cdecl). This file
// only makes SwiftPM build carwindow.h as a C module, so the Swift side uses the header's own
// types and cannot drift from their layout; it compiles the header as plain C on every build.
#include "carwindow.h"
