#include "internal.h"
const struct kslab_backend slob_backend = { .name = "slob" };
