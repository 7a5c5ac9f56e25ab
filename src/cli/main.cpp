// The kevo executable: hands the command line to the subcommand dispatcher.
#include "cli/commands.h"

int main(int argc, char** argv) { return kevo::cli::run_main(argc, argv); }
