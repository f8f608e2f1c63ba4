/* The mechanisms that are one file each: lib/mechs/<file>.c defines `const struct epar_mech_def epar_mech_def_<name>`
 * (lib/mech.h; a file may define several that share code, as kernel.c). Registering one is its line here,
 * EPAR_MECH_FILE(ENUM_SUFFIX, c_name): the enum value EPAR_MECH_<ENUM_SUFFIX> (lib/mech.h) and the catalogue's pointer
 * to its definition (lib/mech.c) are made from it. EPAR_MECH_FILE_AT(ENUM_SUFFIX, c_name) attaches a definition to an
 * enum value that exists already (a mechanism older than the files, moved into one: its number, which seeds its random
 * streams, 1000 + id, stays). Read with both macros defined, so no include guard. */
EPAR_MECH_FILE_AT(LINEAR_ELU, linear_elu)
EPAR_MECH_FILE_AT(PERFORMER, performer)
EPAR_MECH_FILE_AT(PI_ATTENTION, pi_attention)
EPAR_MECH_FILE_AT(SHAW, shaw)
EPAR_MECH_FILE_AT(TXL, transformer_xl)
EPAR_MECH_FILE_AT(DEBERTA, deberta)
EPAR_MECH_FILE(KERPLE, kerple)
EPAR_MECH_FILE(XPOS, xpos)
EPAR_MECH_FILE(YARN, yarn)
EPAR_MECH_FILE(FIRE, fire)
