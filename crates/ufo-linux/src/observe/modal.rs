//! Modal dialogs: which dialog blocks the window under it ([`blocks`]), one rule for every
//! toolkit. GTK 3 sets the accessible MODAL state, Qt sets only the window manager's
//! `_NET_WM_STATE_MODAL`, and GTK 4 sets neither (its Save dialog is only a
//! `_NET_WM_WINDOW_TYPE_DIALOG`). A blocked window's controls are not listed.

/// Whether a toolkit tells its modal dialogs apart through the accessible MODAL state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModalityReport {
    /// Its modal dialogs carry the MODAL state (GTK 2 and 3 through ATK; any toolkit not
    /// known to omit it, so that a non-modal dialog such as LibreOffice's Find & Replace
    /// never hides its window).
    Reported,
    /// It never sets the MODAL state (GTK 4, Qt 5 and 6): a dialog window may block its
    /// parent without saying so.
    Unreported,
}

/// What an application's `ToolkitName` and `Version` (org.a11y.atspi.Application) say
/// about its modal dialogs.
pub(crate) fn modality_report(toolkit: &str, version: &str) -> ModalityReport {
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u32>().ok());
    let name = toolkit.trim();
    if name.eq_ignore_ascii_case("qt") || (name.eq_ignore_ascii_case("gtk") && major >= Some(4)) {
        ModalityReport::Unreported
    } else {
        ModalityReport::Reported
    }
}

/// What is known of a window attached to the observed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attached {
    /// It is transient for the observed window (`WM_TRANSIENT_FOR`).
    pub transient_for_main: bool,
    /// It belongs to the observed window's process.
    pub same_app: bool,
    /// Its accessible frame has the MODAL state.
    pub a11y_modal: bool,
    /// Its `_NET_WM_STATE` holds `_NET_WM_STATE_MODAL`.
    pub wm_modal: bool,
    /// Its window type is `_NET_WM_WINDOW_TYPE_DIALOG`.
    pub dialog: bool,
    /// What its toolkit says about modality (`None`: the application is not on the bus).
    pub report: Option<ModalityReport>,
}

/// Whether the attached window blocks the observed one (it takes no input until the dialog
/// closes, so its controls are not listed): a window of the same application, transient for
/// it, that is modal by its accessible state, by its window-manager state, or is a dialog
/// from a toolkit that does not report modality.
pub(crate) fn blocks(w: &Attached) -> bool {
    if !(w.transient_for_main && w.same_app) {
        return false;
    }
    let unreported = matches!(w.report, Some(ModalityReport::Unreported));
    w.a11y_modal || w.wm_modal || (w.dialog && unreported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attached(report: Option<ModalityReport>) -> Attached {
        Attached {
            transient_for_main: true,
            same_app: true,
            a11y_modal: false,
            wm_modal: false,
            dialog: false,
            report,
        }
    }

    #[test]
    fn toolkits_without_the_modal_state_are_gtk4_and_qt() {
        use ModalityReport::*;
        assert_eq!(modality_report("GTK", "4.8.3"), Unreported);
        assert_eq!(modality_report("gtk", "4.14"), Unreported);
        assert_eq!(modality_report("Qt", "5.15.8"), Unreported);
        assert_eq!(modality_report("Qt", "6.4.2"), Unreported);
        assert_eq!(modality_report("GTK", "3.24.38"), Reported);
        assert_eq!(modality_report("gtk", "3.24"), Reported);
        assert_eq!(modality_report("GAIL", "2.24.33"), Reported);
        assert_eq!(modality_report("Gecko", "115.0"), Reported);
        assert_eq!(modality_report("VCL", "7.4"), Reported);
        assert_eq!(modality_report("", ""), Reported);
        assert_eq!(modality_report("GTK", "garbage"), Reported);
    }

    #[test]
    fn gtk3_kde_and_gtk4_save_dialogs_all_block_their_window() {
        use ModalityReport::*;
        // GTK 3: the accessible MODAL state
        let gtk3 = Attached {
            a11y_modal: true,
            dialog: true,
            ..attached(Some(Reported))
        };
        // Kate (Qt 5): role dialog without MODAL, but _NET_WM_STATE_MODAL
        let kde = Attached {
            wm_modal: true,
            dialog: true,
            ..attached(Some(Unreported))
        };
        // gnome-text-editor (GTK 4.8): neither, only the dialog window type
        let gtk4 = Attached {
            dialog: true,
            ..attached(Some(Unreported))
        };
        assert!(blocks(&gtk3));
        assert!(blocks(&kde));
        assert!(blocks(&gtk4));
    }

    #[test]
    fn non_modal_and_foreign_windows_do_not_block() {
        use ModalityReport::*;
        // a non-modal dialog of a toolkit that reports modality (LibreOffice's Find & Replace)
        let find = Attached {
            dialog: true,
            ..attached(Some(Reported))
        };
        assert!(!blocks(&find));
        // a dialog whose application is not on the bus: nothing says it is modal
        assert!(!blocks(&Attached {
            dialog: true,
            ..attached(None)
        }));
        // a Qt tool window that is not a dialog (a detached dock)
        assert!(!blocks(&attached(Some(Unreported))));
        // another application's modal dialog transient for this window
        let foreign = Attached {
            same_app: false,
            wm_modal: true,
            a11y_modal: true,
            dialog: true,
            ..attached(Some(Unreported))
        };
        assert!(!blocks(&foreign));
        // a modal dialog of the same application over another of its windows
        let elsewhere = Attached {
            transient_for_main: false,
            wm_modal: true,
            ..attached(Some(Reported))
        };
        assert!(!blocks(&elsewhere));
    }

    proptest::proptest! {
        #[test]
        fn a_window_modal_by_any_sign_blocks_iff_it_is_the_apps_and_over_this_window(
            transient_for_main: bool, same_app: bool, a11y_modal: bool, wm_modal: bool,
            dialog: bool, report in proptest::option::of(proptest::prop_oneof![
                proptest::strategy::Just(ModalityReport::Reported),
                proptest::strategy::Just(ModalityReport::Unreported),
            ]),
        ) {
            let w = Attached { transient_for_main, same_app, a11y_modal, wm_modal, dialog, report };
            if a11y_modal || wm_modal {
                proptest::prop_assert_eq!(blocks(&w), transient_for_main && same_app);
            }
            if !(a11y_modal || wm_modal || dialog) {
                proptest::prop_assert!(!blocks(&w));
            }
        }
    }
}
