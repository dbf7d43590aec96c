#include "crashsim/json.h"
