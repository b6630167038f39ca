//! One group of tests per session state: what each command gets there.

use crate::driver::{codes, limits, Driver};
use mail::smtp::{BodyType, Recipient, Session, SessionLimits, StoreFailure, Verdict, Waiting};
use mail::MailError;

fn in_transaction() -> Driver {
    let mut d = Driver::greeted();
    assert_eq!(codes(&d.send("MAIL FROM:<carol@sender.org>\r\n")), [250]);
    d
}

fn with_recipient() -> Driver {
    let mut d = in_transaction();
    assert_eq!(codes(&d.send("RCPT TO:<alice@example.com>\r\n")), [250]);
    d
}

mod construction {
    use super::*;

    #[test]
    fn greets_with_220_and_its_name() {
        let d = Driver::new(limits());
        assert_eq!(d.greeting, "220 mx.example.com ESMTP Folio ready\r\n");
        assert_eq!(d.session.waiting_for(), Waiting::Command);
    }

    #[test]
    fn bad_settings_are_refused() {
        for name in ["", "mx example", "mx\r\n250 OK", "é"] {
            assert!(matches!(
                Session::new(name, SessionLimits::default()),
                Err(MailError::SmtpSetting(_))
            ));
        }
        let limits = SessionLimits {
            max_line_length: 100,
            ..SessionLimits::default()
        };
        assert!(matches!(
            Session::new("mx", limits),
            Err(MailError::SmtpSetting(_))
        ));
    }

    #[test]
    fn answers_to_questions_not_asked_are_errors() {
        let mut d = Driver::greeted();
        assert!(matches!(
            d.session.recipient_verdict(Verdict::Accept),
            Err(MailError::SmtpNotWaiting(_))
        ));
        assert!(matches!(
            d.session.stored(Err(StoreFailure::Transient)),
            Err(MailError::SmtpNotWaiting(_))
        ));
        assert!(matches!(
            d.session.tls_started(),
            Err(MailError::SmtpNotWaiting(_))
        ));
        assert_eq!(d.output(), "", "a wrong answer changes nothing");
        assert_eq!(codes(&d.send("NOOP\r\n")), [250]);
    }
}

mod before_hello {
    use super::*;

    #[test]
    fn transaction_commands_need_a_greeting() {
        let mut d = Driver::new(limits());
        let out = d.send("MAIL FROM:<a@b.org>\r\nRCPT TO:<alice@example.com>\r\nDATA\r\n");
        assert_eq!(codes(&out), [503, 503, 503]);
        assert!(out.contains("send EHLO or HELO first"));
        assert!(d.asked.is_empty());
    }

    #[test]
    fn commands_that_need_no_state() {
        let mut d = Driver::new(limits());
        let out = d.send("NOOP\r\nRSET\r\nVRFY alice\r\nHELP\r\nEXPN staff\r\n");
        assert_eq!(codes(&out), [250, 250, 252, 214, 502]);
    }

    #[test]
    fn ehlo_advertises_the_extensions() {
        let mut d = Driver::new(limits());
        assert_eq!(
            d.send("EHLO client.example.org\r\n"),
            "250-mx.example.com\r\n250-PIPELINING\r\n250-SIZE 1000\r\n250-8BITMIME\r\n250 STARTTLS\r\n"
        );
        let mut plain = Driver::new(SessionLimits {
            starttls: false,
            ..limits()
        });
        assert!(!plain.send("EHLO x\r\n").contains("STARTTLS"));
    }

    #[test]
    fn helo_is_one_line_and_allows_mail() {
        let mut d = Driver::new(limits());
        assert_eq!(d.send("HELO client\r\n"), "250 mx.example.com\r\n");
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org>\r\n")), [250]);
    }

    #[test]
    fn hello_without_a_domain_is_a_syntax_error() {
        let mut d = Driver::new(limits());
        assert_eq!(codes(&d.send("EHLO\r\nHELO \r\n")), [501, 501]);
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org>\r\n")), [503]);
    }

    #[test]
    fn quit_says_221_and_closes() {
        let mut d = Driver::new(limits());
        assert_eq!(
            d.send("QUIT\r\nNOOP\r\n"),
            "221 mx.example.com closing connection\r\n"
        );
        assert!(d.closed);
        assert_eq!(d.session.waiting_for(), Waiting::Closed);
        assert_eq!(d.send("NOOP\r\n"), "", "input after close is ignored");
    }
}

mod greeted {
    use super::*;

    #[test]
    fn mail_opens_a_transaction() {
        let mut d = Driver::greeted();
        assert_eq!(
            d.send("mail from:<carol@sender.org>\r\n"),
            "250 Sender OK\r\n"
        );
        assert_eq!(codes(&d.send("MAIL FROM:<other@sender.org>\r\n")), [503]);
    }

    #[test]
    fn rcpt_and_data_need_mail() {
        let mut d = Driver::greeted();
        let out = d.send("RCPT TO:<alice@example.com>\r\nDATA\r\n");
        assert_eq!(codes(&out), [503, 503]);
        assert!(out.contains("need MAIL first"));
    }

    #[test]
    fn declared_size_over_the_limit_is_552_and_opens_nothing() {
        let mut d = Driver::greeted();
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org> SIZE=1001\r\n")), [552]);
        assert_eq!(codes(&d.send("RCPT TO:<alice@example.com>\r\n")), [503]);
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org> SIZE=1000\r\n")), [250]);
    }

    #[test]
    fn parameters() {
        let mut d = Driver::greeted();
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org> RET=FULL\r\n")), [555]);
        assert_eq!(
            codes(&d.send("MAIL FROM:<a@b.org> BODY=BINARYMIME\r\n")),
            [501]
        );
        assert_eq!(
            codes(&d.send("MAIL FROM:<a@b.org> BODY=8BITMIME SIZE=10\r\n")),
            [250]
        );
        assert_eq!(
            codes(&d.send("RCPT TO:<alice@example.com> NOTIFY=NEVER\r\n")),
            [555]
        );
        d.send("RCPT TO:<alice@example.com>\r\nDATA\r\nhi\r\n.\r\n");
        let envelope = &d.stored[0].envelope;
        assert_eq!(envelope.body, BodyType::EightBitMime);
        assert_eq!(envelope.declared_size, Some(10));
    }

    #[test]
    fn malformed_paths_are_501() {
        let mut d = Driver::greeted();
        let out =
            d.send("MAIL FROM:carol@sender.org\r\nMAIL FROM:<carol>\r\nMAIL TO:<a@b.org>\r\n");
        assert_eq!(codes(&out), [501, 501, 501]);
        assert!(out.contains("angle brackets"), "{out}");
    }
}

mod in_a_transaction {
    use super::*;

    #[test]
    fn each_verdict_has_its_reply() {
        let mut d = in_transaction();
        let out = d.send(concat!(
            "RCPT TO:<alice@example.com>\r\n",
            "RCPT TO:<nobody@example.com>\r\n",
            "RCPT TO:<x@other.org>\r\n",
            "RCPT TO:<later@example.com>\r\n",
            "RCPT TO:<Postmaster>\r\n",
        ));
        assert_eq!(codes(&out), [250, 550, 550, 450, 250]);
        assert!(out.contains("No such user here") && out.contains("Relaying not permitted"));
        assert_eq!(d.asked.len(), 5);
        assert_eq!(d.asked[4], Recipient::Postmaster);
        d.send("DATA\r\nhi\r\n.\r\n");
        let recipients: Vec<String> = d.stored[0]
            .envelope
            .recipients
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(recipients, ["alice@example.com", "Postmaster"]);
    }

    #[test]
    fn rcpt_pauses_the_session_until_the_verdict() {
        let mut d = in_transaction();
        d.answer = false;
        assert_eq!(d.send("RCPT TO:<alice@example.com>\r\nNOOP\r\n"), "");
        assert_eq!(d.session.waiting_for(), Waiting::RecipientVerdict);
        assert_eq!(d.send("NOOP\r\n"), "", "input waits while paused");
        let recipient = d.held_rcpt.take().unwrap();
        assert_eq!(recipient.to_string(), "alice@example.com");
        d.session.recipient_verdict(Verdict::Accept).unwrap();
        d.drain();
        assert_eq!(d.output(), "250 Recipient OK\r\n250 OK\r\n250 OK\r\n");
        assert_eq!(d.session.waiting_for(), Waiting::Command);
    }

    #[test]
    fn data_without_an_accepted_recipient_is_554() {
        let mut d = in_transaction();
        assert_eq!(
            codes(&d.send("RCPT TO:<nobody@example.com>\r\nDATA\r\n")),
            [550, 554]
        );
    }

    #[test]
    fn too_many_recipients_is_452_without_asking() {
        let mut d = in_transaction();
        let many: String = (0..101)
            .map(|_| "RCPT TO:<alice@example.com>\r\n")
            .collect();
        let out = codes(&d.send(many));
        assert_eq!(out.len(), 101);
        assert!(out[..100].iter().all(|&c| c == 250));
        assert_eq!(out[100], 452);
        assert_eq!(d.asked.len(), 100);
    }

    #[test]
    fn rset_and_ehlo_end_the_transaction() {
        for reset in ["RSET\r\n", "EHLO again.example.org\r\n", "HELO again\r\n"] {
            let mut d = with_recipient();
            d.send(reset);
            assert_eq!(
                codes(&d.send("RCPT TO:<bob@example.com>\r\nDATA\r\n")),
                [503, 503],
                "{reset}"
            );
            assert_eq!(codes(&d.send("MAIL FROM:<a@b.org>\r\n")), [250]);
        }
    }

    #[test]
    fn starttls_is_refused_inside_a_transaction() {
        let mut d = in_transaction();
        assert_eq!(codes(&d.send("STARTTLS\r\n")), [503]);
        assert_eq!(d.handshakes, 0);
    }
}

mod receiving_data {
    use super::*;

    #[test]
    fn a_message_is_stored_then_250() {
        let mut d = with_recipient();
        assert_eq!(
            d.send("DATA\r\n"),
            "354 End data with <CR><LF>.<CR><LF>\r\n"
        );
        assert_eq!(d.session.waiting_for(), Waiting::MessageData);
        assert_eq!(d.send("Subject: hi\r\n\r\n..dots\r\n"), "");
        assert_eq!(d.send(".\r\n"), "250 OK queued as Q1-1\r\n");
        let delivery = &d.stored[0];
        assert_eq!(delivery.data, b"Subject: hi\r\n\r\n.dots\r\n");
        assert_eq!(delivery.envelope.client_domain, "client.example.org");
        assert!(delivery.envelope.esmtp && !delivery.envelope.tls);
        assert_eq!(
            delivery.envelope.sender.as_ref().unwrap().to_string(),
            "carol@sender.org"
        );
        // The transaction is over.
        assert_eq!(codes(&d.send("RCPT TO:<bob@example.com>\r\n")), [503]);
    }

    #[test]
    fn null_reverse_path_is_allowed() {
        let mut d = Driver::greeted();
        let out = d.send("MAIL FROM:<>\r\nRCPT TO:<alice@example.com>\r\nDATA\r\nbounce\r\n.\r\n");
        assert_eq!(codes(&out), [250, 250, 354, 250]);
        assert_eq!(d.stored[0].envelope.sender, None);
    }

    #[test]
    fn storing_pauses_the_session_until_durable() {
        let mut d = with_recipient();
        d.answer = false;
        assert_eq!(codes(&d.send("DATA\r\nhi\r\n.\r\nQUIT\r\n")), [354]);
        assert_eq!(d.session.waiting_for(), Waiting::StoreResult);
        assert!(!d.closed, "QUIT waits behind the store");
        let delivery = d.held_store.take().unwrap();
        d.store(delivery);
        d.drain();
        assert_eq!(codes(&d.output()), [250, 221]);
        assert!(d.closed);
    }

    #[test]
    fn failed_stores_get_their_codes_and_store_nothing() {
        let cases = [
            (StoreFailure::Transient, 451),
            (StoreFailure::InsufficientStorage, 452),
            (StoreFailure::ExceedsStorage, 552),
            (StoreFailure::Rejected, 554),
        ];
        for (failure, code) in cases {
            let mut d = with_recipient();
            d.store_result = Err(failure);
            assert_eq!(codes(&d.send("DATA\r\nhi\r\n.\r\n")), [354, code]);
            assert!(d.stored.is_empty());
            // The session goes on, with no transaction.
            assert_eq!(
                codes(&d.send("RCPT TO:<bob@example.com>\r\nNOOP\r\n")),
                [503, 250]
            );
        }
    }

    #[test]
    fn an_oversized_message_is_552_after_the_dot() {
        let mut d = with_recipient();
        assert_eq!(codes(&d.send("DATA\r\n")), [354]);
        let line = format!("{}\r\n", "x".repeat(98));
        for _ in 0..20 {
            assert_eq!(d.send(&line), "", "no reply before the final dot");
        }
        assert_eq!(codes(&d.send(".\r\n")), [552]);
        assert!(d.stored.is_empty());
        assert_eq!(codes(&d.send("MAIL FROM:<a@b.org>\r\n")), [250]);
    }

    #[test]
    fn a_message_of_exactly_the_limit_is_accepted() {
        let mut d = with_recipient();
        let body = format!("{}\r\n", "x".repeat(998));
        assert_eq!(codes(&d.send(format!("DATA\r\n{body}.\r\n"))), [354, 250]);
        assert_eq!(d.stored[0].data.len(), 1000);
    }

    #[test]
    fn bare_line_feeds_in_data_are_554() {
        let mut d = with_recipient();
        let out = d.send("DATA\r\nSubject: x\n\nhi\n.\nMAIL FROM:<evil@x.org>\n.\r\n");
        assert_eq!(codes(&out), [354], "LF.LF does not end the message");
        assert_eq!(codes(&d.send("\r\n.\r\n")), [554]);
        assert!(d.stored.is_empty());
    }

    #[test]
    fn an_unterminated_message_is_never_stored() {
        let mut d = with_recipient();
        d.send("DATA\r\nSubject: x\r\n\r\nhello\r\n");
        d.session.timed_out();
        d.drain();
        assert_eq!(
            d.output(),
            "421 mx.example.com Timeout, closing connection\r\n"
        );
        assert!(d.closed && d.stored.is_empty());
    }
}

mod tls {
    use super::*;

    #[test]
    fn starttls_resets_the_session() {
        let mut d = Driver::greeted();
        assert_eq!(d.send("STARTTLS\r\n"), "220 Ready to start TLS\r\n");
        assert_eq!(d.handshakes, 1);
        assert_eq!(
            codes(&d.send("MAIL FROM:<a@b.org>\r\n")),
            [503],
            "greeting forgotten"
        );
        let ehlo = d.send("EHLO client.example.org\r\n");
        assert!(!ehlo.contains("STARTTLS"), "{ehlo}");
        assert_eq!(codes(&d.send("STARTTLS\r\n")), [503]);
        d.send("MAIL FROM:<a@b.org>\r\nRCPT TO:<bob@example.com>\r\nDATA\r\nhi\r\n.\r\n");
        assert!(d.stored[0].envelope.tls);
    }

    #[test]
    fn commands_pipelined_after_starttls_are_refused() {
        let mut d = Driver::greeted();
        let out = d.send("STARTTLS\r\nMAIL FROM:<evil@x.org>\r\n");
        assert_eq!(codes(&out), [220, 421]);
        assert!(out.contains("pipelined after STARTTLS"));
        assert!(d.closed);
    }

    #[test]
    fn not_offered_or_with_arguments() {
        let mut d = Driver::new(SessionLimits {
            starttls: false,
            ..limits()
        });
        assert_eq!(codes(&d.send("EHLO x\r\nSTARTTLS\r\n")), [250, 502]);
        let mut d = Driver::greeted();
        assert_eq!(codes(&d.send("STARTTLS now\r\n")), [501]);
        assert_eq!(d.handshakes, 0);
    }
}

mod line_rules {
    use super::*;

    #[test]
    fn a_command_split_across_reads_waits_for_its_end() {
        let mut d = Driver::greeted();
        assert_eq!(d.send("NO"), "");
        assert_eq!(d.send("OP\r"), "");
        assert_eq!(d.send("\nNOOP\r\nRS"), "250 OK\r\n250 OK\r\n");
        assert_eq!(d.send("ET\r\n"), "250 Reset\r\n");
    }

    #[test]
    fn a_long_line_is_500_and_not_executed() {
        let mut d = Driver::greeted();
        let long = format!("MAIL FROM:<{}@b.org>\r\n", "a".repeat(600));
        assert_eq!(d.send(&long), "500 Line too long\r\n");
        assert_eq!(codes(&d.send("RCPT TO:<alice@example.com>\r\n")), [503]);
    }

    #[test]
    fn a_long_line_in_pieces_is_answered_once() {
        let mut d = Driver::greeted();
        assert_eq!(codes(&d.send("NOOP ".repeat(110))), [500]);
        assert_eq!(
            d.send("NOOP ".repeat(50)),
            "",
            "the rest of the line is skipped"
        );
        assert_eq!(codes(&d.send("\r\nNOOP\r\n")), [250]);
    }

    #[test]
    fn the_line_limit_counts_the_crlf() {
        let mut d = Driver::greeted();
        let fits = format!("NOOP {}\r\n", "x".repeat(512 - 7));
        assert_eq!(codes(&d.send(fits)), [250]);
        let over = format!("NOOP {}\r\n", "x".repeat(512 - 6));
        assert_eq!(codes(&d.send(over)), [500]);
    }

    #[test]
    fn a_bare_lf_command_is_500_and_not_executed() {
        let mut d = Driver::greeted();
        let out = d.send("MAIL FROM:<a@b.org>\n");
        assert_eq!(
            out,
            "500 Bare LF in command; lines must end with CRLF (RFC 5321 2.3.8)\r\n"
        );
        assert_eq!(codes(&d.send("RCPT TO:<alice@example.com>\r\n")), [503]);
    }

    #[test]
    fn too_many_bad_commands_close_with_421() {
        let mut d = Driver::greeted();
        let out = d.send("FOO\r\nBAR\r\nRCPT TO:<a@b.org>\r\nEHLO\r\nBAZ\r\nNOOP\r\n");
        assert_eq!(codes(&out), [500, 500, 503, 501, 500, 421]);
        assert!(d.closed);
    }
}

mod pipelining {
    use super::*;

    #[test]
    fn replies_come_in_order_and_failures_do_not_stop_the_rest() {
        let mut d = Driver::greeted();
        let out = d.send(concat!(
            "MAIL FROM:<broken\r\n",
            "MAIL FROM:<carol@sender.org>\r\n",
            "RCPT TO:<nobody@example.com>\r\n",
            "RCPT TO:<alice@example.com>\r\n",
            "DATA\r\n",
        ));
        assert_eq!(codes(&out), [501, 250, 550, 250, 354]);
    }

    #[test]
    fn bytes_after_354_are_the_message() {
        let mut d = with_recipient();
        let out = d.send("DATA\r\nMAIL FROM:<x@y.org>\r\nQUIT\r\n.\r\nNOOP\r\n");
        assert_eq!(codes(&out), [354, 250, 250]);
        assert_eq!(d.stored[0].data, b"MAIL FROM:<x@y.org>\r\nQUIT\r\n");
        assert!(!d.closed);
    }

    #[test]
    fn a_body_after_a_refused_data_is_read_as_commands() {
        let mut d = in_transaction();
        let out =
            d.send("RCPT TO:<nobody@example.com>\r\nDATA\r\nSubject: x\r\n\r\nhello\r\n.\r\n");
        assert_eq!(codes(&out), [550, 554, 500, 500, 500, 500]);
        assert!(d.stored.is_empty());
    }
}
