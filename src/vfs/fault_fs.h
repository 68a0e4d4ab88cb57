// FaultInjectingFs: a Filesystem decorator that makes chosen operations fail.
#pragma once
