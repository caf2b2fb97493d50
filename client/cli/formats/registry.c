/* registry.c — the configuration formats of this build, by name (format.h).
 *
 * The list comes from client/CMakeLists.txt: each `rk_cli_conf_format(<name> <file>...)` there
 * compiles the files and writes RK_CLI_FORMAT(<name>) into formats.def, so a format is registered
 * by the line that builds it, and a build lists exactly the formats it has. */
#include "format.h"

#define RK_CLI_FORMAT(name) extern const rk_cli_conf_format rk_cli_conf_format_##name;
#include "formats.def"
#undef RK_CLI_FORMAT

const rk_cli_conf_format *const rk_cli_conf_formats[] = {
#define RK_CLI_FORMAT(name) &rk_cli_conf_format_##name,
#include "formats.def"
#undef RK_CLI_FORMAT
};
const size_t rk_cli_n_conf_formats = sizeof rk_cli_conf_formats / sizeof rk_cli_conf_formats[0];
_Static_assert(sizeof rk_cli_conf_formats / sizeof rk_cli_conf_formats[0] <= RK_CLI_FORMATS_MAX,
               "more formats than RK_CLI_FORMATS_MAX");
