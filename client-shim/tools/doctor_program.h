/* `vmcuda doctor PROGRAM`: which front end serves a program (doctor_program.c). */
#ifndef DOCTOR_PROGRAM_H
#define DOCTOR_PROGRAM_H

/* Prints section 0 of the doctor's report; 0, or -1 when vmcuda cannot serve (or read) the program. */
int doctor_explain_program(const char *path);

#endif
