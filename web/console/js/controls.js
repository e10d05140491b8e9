// Pause, resume and terminate, with the phone's confirmations: each asks for a reason, and
// terminate only goes once TERMINATE is typed (the API refuses it otherwise). The receipt is
// shown and followed until every command is acknowledged.
import { api, seg, errorText, RetryKey } from './api.js';
import { h, replace, badge, when } from './dom.js';
import { announce } from './app.js';

const verbs = { pause: 'Pause', resume: 'Resume', terminate: 'Terminate' };

/** Buttons for `target` ('agents' or 'swarms') `id`, writing receipts into `receiptBox`. */
export function controlButtons(target, id, receiptBox, { scopes }) {
  const allowed = scopes.includes('agents:control');
  const buttons = Object.entries(verbs).map(([action, label]) =>
    h('button', {
      type: 'button',
      class: action === 'terminate' ? 'danger' : 'secondary',
      disabled: !allowed,
      'data-action': action,
      onclick: () => confirmControl(target, id, action, receiptBox),
    }, `${label}${target === 'swarms' ? ' all' : ''}…`));
  return h('div', { class: 'actions', role: 'group', 'aria-label': 'Controls' }, buttons,
    allowed ? null : h('p', { class: 'hint' }, 'Your token lacks the agents:control scope.'));
}

function confirmControl(target, id, action, receiptBox) {
  const what = target === 'swarms' ? `every agent of swarm ${id}` : `agent ${id}`;
  const reason = h('input', { id: 'control-reason', required: true, maxlength: 500, value: `${verbs[action]}d from the web console` });
  const typed = h('input', { id: 'control-confirm', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'control-confirm-hint' });
  const go = h('button', { type: 'submit', class: action === 'terminate' ? 'danger' : '', disabled: action === 'terminate' }, verbs[action]);
  const error = h('div', { class: 'error-box', role: 'alert', hidden: true });
  const form = h('form', { method: 'dialog', class: 'stacked' },
    h('h2', { id: 'control-title' }, `${verbs[action]} ${what}?`),
    action === 'terminate' ? h('p', {}, 'The process is stopped for good; it cannot be resumed.') : null,
    h('label', { for: 'control-reason' }, 'Reason (recorded in the audit log)'),
    reason,
    action === 'terminate' ? [
      h('label', { for: 'control-confirm' }, 'Type TERMINATE to confirm'),
      typed,
      h('p', { class: 'hint', id: 'control-confirm-hint' }, 'In capitals, as the phone asks.'),
    ] : null,
    error,
    h('div', { class: 'actions' },
      go,
      h('button', { type: 'button', class: 'secondary', value: 'cancel', onclick: () => dialog.close('cancel') }, 'Cancel')));
  const dialog = h('dialog', { 'aria-labelledby': 'control-title' }, form);
  typed.addEventListener('input', () => (go.disabled = typed.value !== 'TERMINATE'));
  // One key for this dialog: a retry after a lost answer gets the same receipt, not a second
  // control.
  const key = new RetryKey();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = { action, reason: reason.value.trim(), requestId: key.value };
    if (action === 'terminate') body.confirm = typed.value;
    go.disabled = true;
    try {
      const receipt = await api(`/v1/${target}/${seg(id)}/control`, { method: 'POST', body });
      dialog.close('sent');
      follow(receipt, receiptBox);
    } catch (e) {
      error.hidden = false;
      error.textContent = errorText(e);
      go.disabled = action === 'terminate' && typed.value !== 'TERMINATE';
      reason.disabled = key.keptAfter(e);
    }
  });
  dialog.addEventListener('close', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  reason.select();
}

/** Shows a control receipt and polls GET /v1/controls/{id} until its commands settle (2 min). */
export async function follow(receipt, box) {
  announce(`${receipt.action} accepted: ${receipt.commands.length} command(s)`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    let status;
    try {
      status = await api(`/v1/controls/${seg(receipt.requestId)}`);
    } catch (e) {
      replace(box, h('div', { class: 'error-box', role: 'alert' }, errorText(e)));
      return;
    }
    if (!box.isConnected) return;
    replace(box,
      h('h2', {}, 'Receipt'),
      h('p', {}, `${receipt.action} of ${receipt.target} ${receipt.targetId}, request ${receipt.requestId}, audit #${receipt.auditId}, accepted `, when(receipt.acceptedAt)),
      h('ul', { class: 'receipt' }, status.commands.map((c) =>
        h('li', { 'data-command': c.commandId }, `${c.agentId}: `, badge(c.state), c.agentState ? ` agent ${c.agentState}` : '', c.message ? ` (${c.message})` : ''))));
    if (status.commands.every((c) => c.state !== 'pending') || Date.now() > deadline) {
      announce(`${receipt.action}: ${status.commands.map((c) => c.state).join(', ')}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
