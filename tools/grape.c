/* grape: the command-line front end. Thin by design: it picks a subcommand
 * from commands.def and hands it argv; the work lives in the modules.
 * Results go to stdout, diagnostics to stderr. */
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/grape.h"

typedef struct command_s {
  const char* name;
  int (*fn)(int argc, char** argv);
  const char* summary;
} command_t;

static const command_t commands[] = {
#define GRAPE_COMMAND(name, fn, summary) {name, fn, summary},
#include "commands.def"
#undef GRAPE_COMMAND
};

static void usage(FILE* to) {
  fprintf(to, "usage: grape COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    fprintf(to, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(to, "\n'grape help COMMAND' or 'grape COMMAND --help' describes one command.\n");
}

/* "--opt=value" as "--opt value", for every command's arguments up to a bare
 * "--": one rule here, so that the commands that read their arguments one by
 * one take both spellings like the getopt_long ones. Not for `grape run`,
 * whose arguments after its own options are the command's (getopt_long
 * takes both spellings of its own). @return the new argv (malloc'd: kept
 * until exit), or argv itself when nothing is split or memory runs out. */
static char** split_eq(int* argc, char** argv) {
  int extra = 0;
  for (int i = 0; i < *argc && strcmp(argv[i], "--") != 0; i++)
    extra += strncmp(argv[i], "--", 2) == 0 && strchr(argv[i], '=') != NULL;
  char** out = extra ? malloc((size_t)(*argc + extra + 1) * sizeof(*out)) : NULL;
  if (out == NULL)
    return argv;
  int n = 0, split = 1;
  for (int i = 0; i < *argc; i++) {
    char* eq = split && strncmp(argv[i], "--", 2) == 0 ? strchr(argv[i], '=') : NULL;
    if (strcmp(argv[i], "--") == 0)
      split = 0;
    if (eq == NULL) {
      out[n++] = argv[i];
      continue;
    }
    *eq = '\0';   /* argv's strings are ours to change */
    out[n++] = argv[i];
    out[n++] = eq + 1;
  }
  out[n] = NULL;
  *argc = n;
  return out;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "help") == 0 && argc > 2) {
    /* grape help CMD: the command's own --help. */
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
      if (strcmp(argv[2], commands[i].name) == 0) {
        char* args[] = {argv[2], "--help", NULL};
        return commands[i].fn(2, args);
      }
    fprintf(stderr, "grape: error: unknown command '%s'\n", argv[2]);
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    unsigned v = grape_version();
    printf("grape %u.%u.%u\n", v / 10000, v / 100 % 100, v % 100);
    return 0;
  }
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    if (strcmp(argv[1], commands[i].name) == 0) {
      int n = argc - 1;
      char** args = commands[i].fn == cmd_run ? argv + 1 : split_eq(&n, argv + 1);
      return commands[i].fn(n, args);
    }
  fprintf(stderr, "grape: error: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
