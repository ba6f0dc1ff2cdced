// memory_bomb.cu taking its memory as a file in /dev/shm (tmpfs) rather than anonymous memory.
// Usage: memory_bomb_shm SECONDS
#define BOMB_IN_SHM 1
#include "memory_bomb.cu"
