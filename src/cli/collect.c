/* carma collect: placeholder, being written. */
#include "cli/cli.h"
#include "cli/common.h"

int cmd_collect(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("collect: not built yet");
    return 2;
}
