/* The plain worker, vmcuda-worker: what the daemon starts for a session that ships no executable (the
 * driver front end's programs: static cudart, the CUDA libraries, frameworks). It registers nothing of its
 * own (its manifest is empty); modules reach it by content through the driver calls. Same library, same
 * sandbox, same serving loop as a rewritten executable's worker. */
int vmcuda_worker_serve(void);

int main(void) { return vmcuda_worker_serve(); }
