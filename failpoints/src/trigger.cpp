#include "crashsim/failpoints.h"
