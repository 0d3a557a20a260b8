/* carma exporter: placeholder, being written. */
#include "cli/cli.h"
#include "cli/common.h"

int cmd_exporter(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("exporter: not built yet");
    return 2;
}
