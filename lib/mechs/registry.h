/* The mechanisms that are one file each: lib/mechs/<name>.c defines `const struct epar_mech_def epar_mech_def_<name>`
 * (lib/mech.h). Registering one is its line here, EPAR_MECH_FILE(ENUM_SUFFIX, c_name): the enum value
 * EPAR_MECH_<ENUM_SUFFIX> (lib/mech.h) and the catalogue's pointer to its definition (lib/mech.c) are made from it.
 * Read with EPAR_MECH_FILE defined, so no include guard. */
EPAR_MECH_FILE(KERPLE, kerple)
EPAR_MECH_FILE(XPOS, xpos)
EPAR_MECH_FILE(YARN, yarn)
EPAR_MECH_FILE(FIRE, fire)
