/* hold_connections SOCKET COUNT SECONDS: keeps COUNT connections to the Unix socket SOCKET open for SECONDS and says
 * nothing on them, connecting again whenever the other end hangs up on one, as a hostile worker would to keep an
 * exporter of shareable handles from answering others (DriverFrontEndTest runs it as another worker's uid). Prints
 * "holding" once the first COUNT are connected, then, at the end, how many connections it made and how many the
 * other end hung up on. No CUDA. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_COUNT 256

static int connect_to(const char *path) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        close(s);
        s = -1;
    }
    return s;
}

int main(int argc, char **argv) {
    if (argc != 4)
        return 2;
    int count = atoi(argv[2]), seconds = atoi(argv[3]);
    if (count < 1 || count > MAX_COUNT || seconds < 1)
        return 2;
    struct pollfd held[MAX_COUNT];
    long made = 0, hung_up = 0;
    for (int i = 0; i < count; i++) {
        held[i] = (struct pollfd){.fd = connect_to(argv[1]), .events = POLLIN};
        made += held[i].fd >= 0;
    }
    printf("holding\n");
    fflush(stdout);
    time_t end = time(NULL) + seconds;
    while (time(NULL) < end) {
        poll(held, (nfds_t)count, 100);
        for (int i = 0; i < count; i++) {
            char b;
            if (held[i].fd >= 0 && !(held[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (held[i].fd >= 0 && recv(held[i].fd, &b, 1, MSG_DONTWAIT) > 0)
                continue; /* an answer to nothing: keep the connection */
            if (held[i].fd >= 0) {
                close(held[i].fd);
                hung_up++;
            }
            held[i].fd = connect_to(argv[1]);
            made += held[i].fd >= 0;
        }
    }
    printf("made %ld connections, %ld hung up on\n", made, hung_up);
    return 0;
}
