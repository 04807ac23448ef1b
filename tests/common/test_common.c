// SPDX-License-Identifier: MIT
#include "test_common.h"
