// Sign-in: a device with an enrolment code (POST /v1/auth/device/register), or a pasted access
// token. Neither is ever put in a URL; the session stays in this tab's sessionStorage.
import { h, replace } from '../dom.js';
import * as session from '../session.js';

export function signIn(main, done) {
  const error = h('div', { class: 'error-box', role: 'alert', hidden: true });
  const fail = (e) => {
    error.hidden = false;
    error.textContent = e.message;
  };
  const code = h('input', { id: 'enrol-code', name: 'code', autocomplete: 'off', required: true, spellcheck: 'false' });
  const device = h('input', { id: 'enrol-device', name: 'device', value: 'Web console', required: true, maxlength: 200 });
  const token = h('textarea', { id: 'paste-token', name: 'token', required: true, spellcheck: 'false', autocomplete: 'off' });
  const enrolForm = h('form', { class: 'stacked', id: 'enrol-form' },
    h('label', { for: 'enrol-code' }, 'Enrolment code'),
    code,
    h('p', { class: 'hint', id: 'enrol-hint' }, 'A one-time code from your admin (swarmdeck tenant create prints them).'),
    h('label', { for: 'enrol-device' }, 'Name of this device'),
    device,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Sign in with the code')));
  code.setAttribute('aria-describedby', 'enrol-hint');
  enrolForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await session.enrol(code.value, device.value);
      done();
    } catch (e) {
      fail(e);
    }
  });
  const tokenForm = h('form', { class: 'stacked', id: 'token-form' },
    h('label', { for: 'paste-token' }, 'Access token'),
    token,
    h('p', { class: 'hint', id: 'token-hint' }, 'An access token (JWT) for your tenant; it is kept in this tab only and ends with its expiry.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Use this token')));
  token.setAttribute('aria-describedby', 'token-hint');
  tokenForm.addEventListener('submit', (event) => {
    event.preventDefault();
    try {
      session.useToken(token.value);
      done();
    } catch (e) {
      fail(e);
    }
  });
  replace(main,
    h('div', { class: 'signin' },
      h('h1', {}, 'Sign in'),
      error,
      h('section', { 'aria-labelledby': 'enrol-heading' }, h('h2', { id: 'enrol-heading' }, 'This browser as a device'), enrolForm),
      h('section', { 'aria-labelledby': 'token-heading' }, h('h2', { id: 'token-heading' }, 'With a token'), tokenForm)));
}
