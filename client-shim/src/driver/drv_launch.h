/* What other parts of the driver front end tell the launch code (drv_launch.c). */
#ifndef DRV_LAUNCH_H
#define DRV_LAUNCH_H

/* A module, library or context is gone: its handles may be handed out again, so everything remembered by
 * handle (parameter layouts, launch limits, names, attributes, functions per context) is dropped. */
void vmc_drv_forget_handles(void);

#endif
