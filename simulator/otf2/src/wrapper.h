#include <otf2/otf2.h>
