/*
 * The floor under POST /files/write and a download in bench/file-routes.ts: the least an HTTP
 * server can do with a request body, in C, so that the benchmark can say what
 * share of it the service reaches in the same run.
 *
 *   http-sink discard          read the body and drop it
 *   http-sink splice <file>    splice(2) the body from the socket through a
 *                              pipe into <file> (no byte in user space), then
 *                              fsync it, as the service does before its rename
 *   http-sink send <file>      answer with <file>, sent with sendfile(2): the
 *                              floor under a download
 *
 * Listens on 127.0.0.1, an ephemeral port printed on the first line of stdout;
 * one request per connection, answered 204 with Connection: close. Only
 * bodies with a Content-Length (curl -T sends one). Not part of the service.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static char buf[CHUNK + 1];

static void reply(int conn, const char *text) {
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(conn, text, left);
    if (n <= 0) return;
    text += n;
    left -= (size_t)n;
  }
}

/* Reads the request head; returns the Content-Length (-1 if none, -2 if no head came), and in *body and *have what of the body came with it. */
static long read_head(int conn, char **body, size_t *have) {
  size_t got = 0;
  char *end;
  for (;;) {
    ssize_t n = read(conn, buf + got, CHUNK - got);
    if (n <= 0) return -2;
    got += (size_t)n;
    buf[got] = '\0';
    if ((end = strstr(buf, "\r\n\r\n")) != NULL) break;
    if (got == CHUNK) return -2;
  }
  *end = '\0';
  long length = -1;
  for (char *line = strstr(buf, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
    if (strncasecmp(line + 2, "content-length:", 15) == 0) length = atol(line + 17);
    if (strncasecmp(line + 2, "expect: 100-continue", 20) == 0) reply(conn, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  *body = end + 4;
  *have = got - (size_t)(end + 4 - buf);
  return length;
}

/* Answers with the whole file; returns 1 (answered) or -1. */
static int send_file(int conn, const char *path) {
  int file = open(path, O_RDONLY);
  struct stat st;
  if (file < 0 || fstat(file, &st) != 0) return -1;
  char head[128];
  snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n", (long long)st.st_size);
  reply(conn, head);
  off_t offset = 0;
  while (offset < st.st_size) {
    ssize_t n = sendfile(conn, file, &offset, (size_t)(st.st_size - offset));
    if (n <= 0) break;
  }
  close(file);
  return offset == st.st_size ? 1 : -1;
}

static int sink(int conn, const char *mode, const char *path) {
  char *body;
  size_t have;
  long left = read_head(conn, &body, &have);
  if (left == -2) return -1;
  if (strcmp(mode, "send") == 0) return send_file(conn, path);
  if (left < 0) return -1;
  left -= (long)have;
  if (strcmp(mode, "discard") == 0) {
    while (left > 0) {
      ssize_t n = read(conn, buf, CHUNK);
      if (n <= 0) return -1;
      left -= n;
    }
    return 0;
  }
  int file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int pipes[2];
  if (file < 0 || pipe(pipes) != 0) return -1;
  fcntl(pipes[1], F_SETPIPE_SZ, CHUNK);
  if (write(file, body, have) != (ssize_t)have) return -1;
  while (left > 0) {
    ssize_t n = splice(conn, NULL, pipes[1], NULL, left < CHUNK ? (size_t)left : CHUNK, SPLICE_F_MOVE | SPLICE_F_MORE);
    if (n <= 0) return -1;
    left -= n;
    while (n > 0) {
      ssize_t m = splice(pipes[0], NULL, file, NULL, (size_t)n, SPLICE_F_MOVE);
      if (m <= 0) return -1;
      n -= m;
    }
  }
  int ok = fsync(file);
  close(pipes[0]);
  close(pipes[1]);
  close(file);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "discard") != 0 && argc < 3)) {
    fprintf(stderr, "usage: http-sink discard | http-sink splice <file> | http-sink send <file>\n");
    return 2;
  }
  int server = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t size = sizeof address;
  if (server < 0 || bind(server, (struct sockaddr *)&address, size) != 0 || listen(server, 8) != 0 ||
      getsockname(server, (struct sockaddr *)&address, &size) != 0) {
    perror("http-sink");
    return 1;
  }
  printf("%d\n", ntohs(address.sin_port));
  fflush(stdout);
  for (;;) {
    int conn = accept(server, NULL, NULL);
    if (conn < 0) continue;
    int done = sink(conn, argv[1], argc > 2 ? argv[2] : NULL);
    if (done == 0)
      reply(conn, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
    else if (done < 0)
      reply(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    close(conn);
  }
}
