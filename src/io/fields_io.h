/* fields_io.h: the top modes' fields for the tools DEM and FE people use:
 * a LAMMPS-style text dump (one frame per mode) that OVITO reads, and VTK
 * legacy polydata of the contacts that ParaView reads. */
#ifndef CM_IO_FIELDS_IO_H
#define CM_IO_FIELDS_IO_H

#include "analyze/fields.h"
#include "cmodes.h"

#include <stdio.h>

/* One frame per mode (TIMESTEP = mode number, 1 first), one line per moving
 * body: "id type x y z radius c_ke_share c_max_contact_share c_disp[1]
 * c_disp[2] c_disp[3] v_omega" (LAMMPS' c_/v_ prefixes, which OVITO and
 * ASE keep as named per-particle properties).
 * id = body index + 1; type 1; radius = the nearest-contact distance (the
 * sphere's radius less its overlap), the median for bodies without
 * contacts; c_ke_share = kinetic-energy share in the mode; c_max_contact_share
 * = the largest strain-energy share among the body's contacts; c_disp =
 * the translation in the mode, scaled so the largest |.| is 1 (z = 0 in
 * 2D); v_omega = the mode's angular frequency, rad/s. CM_OK or CM_IO. */
int cm__fields_write_dump(cm_context_t *ctx, FILE *out, const cm_scene_t *s,
                          const cm_report_t *r, const cm__fields_t *f);
/* VTK legacy ASCII polydata: points = every body's position then every
 * contact point; one line cell per contact from body a's centre to body b's
 * centre (to the contact point when b is fixed or the world). Cell data:
 * share_mode1.. (strain-energy share per mode), pc_omega (rad/s),
 * stiffness (N/m), component. Point data: kinetic_mode1.. and disp_mode1..
 * (vectors; 0 on the contact points). CM_OK or CM_IO. */
int cm__fields_write_vtk(cm_context_t *ctx, FILE *out, const cm_scene_t *s,
                         const cm_report_t *r, const cm__fields_t *f);
/* Drawn radius of every body (size s->nbodies), as in the dump. */
void cm__fields_radii(const cm_scene_t *s, double *rad);

/* 1 if contact k touches an image of body b across a periodic boundary:
 * b is a moving body and the contact point is farther from b's centre
 * than the lever arms reach (|arm_a| + |arm_b|); b's image then sits at
 * x_a + arm_a - arm_b. */
int cm__contact_imaged(const cm_scene_t *s, const cm_contact_t *k);

#endif
