#include "vfs/fault_fs.h"
