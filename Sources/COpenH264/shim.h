#include <stdbool.h>
#include <wels/codec_api.h>
