#include "internal.h"
const struct kslab_backend slab_backend = { .name = "slab" };
