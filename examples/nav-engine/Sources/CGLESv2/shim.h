/* OpenGL ES 3, for the engine's own drawing in a custom layer of the map. */
#include <GLES3/gl3.h>
