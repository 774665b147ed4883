#include <png.h>

// PNG_FORMAT_RGBA is a macro expression Swift cannot import.
static inline png_uint_32 carwindow_png_format_rgba(void) { return PNG_FORMAT_RGBA; }
