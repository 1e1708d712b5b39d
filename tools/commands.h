/* Subcommand entry points of the grape CLI, generated from commands.def. */
#ifndef GRAPE_TOOLS_COMMANDS_H
#define GRAPE_TOOLS_COMMANDS_H

#define GRAPE_COMMAND(name, fn, summary) int fn(int argc, char** argv);
#include "commands.def"
#undef GRAPE_COMMAND

#endif
