/* placeholder: being written */
#include "cli/cli.h"

#include <stdio.h>

int cmd_model(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "carma: not available yet\n");
    return 2;
}
